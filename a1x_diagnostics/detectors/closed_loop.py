"""Closed-loop runs (AlpaGym + AlpaSim): the checks that only such a run needs.

Each reads ``ctx.closed_loop`` (``a1x_diagnostics.alpagym.state.ClosedLoopState``, None for every other run:
then it is skipped). The Cosmos-RL part of the run is judged by the open-loop detectors as for any run
(a dead replica, a weight-sync receive that never finished: ``nccl_p2p_hang``, the run's outcome).
Mechanisms and the least evidence of each: docs/findings.md "Closed-loop runs"; the facts:
docs/reference/alpagym.md.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from a1x_diagnostics.closed_loop_events import CL, ClosedLoop
from a1x_diagnostics.detectors._base import DetectorContext, Verdict, detector, make_finding, verdict_of
from a1x_diagnostics.events import SignalKind
from a1x_diagnostics.findings import Evidence, Severity
from a1x_diagnostics.metrics import finite

NOT_CLOSED_LOOP = "not a closed-loop (AlpaGym) run"
RETRY_STORM = 3  # retries before a warning ...
RETRY_SHARE = 0.2  # ... when at least this share of the sessions failed
NONFINITE_RETRIES = 5  # recovered non-finite trajectories before a warning (the preset expects a few)
FLAT_EPISODES = 8  # episodes over ...
FLAT_STEPS = 3  # ... this many steps with one value of a term: it never moves
RISE_STEPS = 6  # steps with scored episodes before comparing the halves
RISE_RATE = 0.1  # collision or offroad rate up by at least this (absolute) and ...
RISE_FACTOR = 1.5  # ... this many times the first half's, while the reward rose


def _events(ctx: DetectorContext, *kinds: CL) -> list[ClosedLoop]:
    out: list[ClosedLoop] = []
    for kind in kinds:
        out.extend(ctx.closed_loop.kind(kind).items())
    return out


def _with_exit(ctx: DetectorContext, hits: list[ClosedLoop]) -> list[Any]:
    """``hits`` and, from the same files, Hydra's ``Error executing job with overrides`` line: the host's end."""
    files = {h.source.path for h in hits}
    ends = [s for s in ctx.signals(SignalKind.FATAL_SIGNAL)
            if s.fields.get("what") == "hydra_job_failed" and s.source.path in files]
    return [*hits, *ends[:len(hits)]]  # one host run ends per refusal (a capture may hold several)


def _hydra(override: str) -> str:
    return f"relaunch the host with the Hydra override {override}"


# --- the simulator's bring-up ----------------------------------------------------------------------------
_BRINGUP = {
    "wizard_exited": ("the AlpaSim Wizard exited before its RuntimeService was ready",
                      "Read the Wizard's own output (a local host's terminal, or logs/wizard_<i>.log on Slurm; "
                      "`docker compose logs` in alpasim/wizard_<i>/): the NVIDIA Container Toolkit, docker without "
                      "sudo and a gated scene download (GatedRepoError) are the usual causes. AlpaSim's own tutorial "
                      "(level 1) checks the simulator alone."),
    "runtime_timeout": ("the AlpaSim RuntimeService did not answer within alpasim.startup_timeout_s",
                        "Scenes are downloaded and rendered caches built at the first start (about 1.5 GB per NuRec "
                        "scene): " + _hydra("alpasim.startup_timeout_s=2400") + ", or pre-fetch the scenes."),
    "no_scenes": ("an AlpaSim runtime reported no scenes",
                  "dataset.scene_ids (or dataset.test_suite_id) names no scene AlpaSim could load: check the ids."),
    "scene_lists_differ": ("the AlpaSim runtimes reported different scene lists",
                           "Every Wizard must load the same scenes: the same dataset on every AlpaSim host, the same "
                           "AlpaSim checkout (alpasim.repo_ref)."),
    "no_docker": ("the host found no docker / docker compose for a local run",
                  "Install Docker with the compose plugin and the NVIDIA Container Toolkit; docker must run "
                  "without sudo."),
    "driver_too_old": ("the renderer's CUDA needs a newer NVIDIA driver (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)",
                       "Upgrade the NVIDIA driver to 570 or newer (CUDA 12.8)."),
    "grpc_stubs_missing": ("AlpaSim's generated gRPC stubs are missing in its service containers",
                           "Generate them in the AlpaSim checkout: `cd src/grpc && uv run compile-protos` (or "
                           "`source setup_local_env.sh`)."),
    "nccl_master_missing": ("the NCCL transport's master endpoint was never published",
                            "transport=nccl: the controller's TCPStore did not start; read controller.log, or use "
                            "transport=disk on one node."),
}


@detector("alpasim_bringup_failed")
def alpasim_bringup_failed(ctx: DetectorContext) -> Verdict:
    if ctx.closed_loop is None:
        return Verdict.skipped(NOT_CLOSED_LOOP)
    hits = _events(ctx, CL.BRINGUP_FAILED)
    if not hits:
        published = ctx.closed_loop.kind(CL.RUNTIME_PUBLISHED)
        return Verdict.ok(f"{published.count} AlpaSim runtime(s) published" if published else None)
    reasons = list(dict.fromkeys(str(h.fields.get("reason")) for h in hits))
    what = "; ".join(_BRINGUP.get(r, (r, ""))[0] for r in reasons)
    code = next((h.fields.get("code") for h in hits if h.fields.get("code") is not None), None)
    text = (f"The simulator never came up: {what}" + (f" (exit code {code})" if code is not None else "")
            + ". The host stops the run before Cosmos-RL starts; nothing was trained.")
    action = " ".join(_BRINGUP.get(r, ("", ""))[1] for r in reasons).strip()
    return verdict_of(make_finding("alpasim_bringup_failed", text, _with_exit(ctx, hits), action=action or None,
                                   data={"reasons": reasons, "code": code}))


# --- episodes ------------------------------------------------------------------------------------------
def _cause(error: str) -> str:
    if "DEADLINE_EXCEEDED" in error or "Deadline Exceeded" in error:
        return "deadline"
    if "requires episode.metrics to be populated" in error:
        return "no_metrics"
    if error.startswith("'") and error.endswith("'"):
        return "missing_metric"  # a KeyError's str(): the metric name in quotes
    return "other"


_CAUSES = {
    "deadline": "simulate() ran past alpasim.simulation_timeout_s",
    "no_metrics": "AlpaSim's evaluation gave no metrics for the episode ('Evaluation failed in subprocess')",
    "missing_metric": "a reward term names a metric AlpaSim does not compute",
}


@detector("episode_failures")
def episode_failures(ctx: DetectorContext) -> Verdict:
    state = ctx.closed_loop
    if state is None:
        return Verdict.skipped(NOT_CLOSED_LOOP)
    retries = _events(ctx, CL.EPISODE_RETRY)
    drops = _events(ctx, CL.EPISODE_DROPPED, CL.PAYLOAD_EXHAUSTED)
    deaths = _events(ctx, CL.SIM_WORKER_DIED)
    sim_failed = _events(ctx, CL.SIM_FAILED)
    n_retry, n_drop = state.count("retried"), state.count("dropped")
    sessions = max(state.count("sessions"), 1)
    exhausted = state.kind(CL.PAYLOAD_EXHAUSTED).count
    if not (drops or deaths) and (n_retry < RETRY_STORM or n_retry / sessions < RETRY_SHARE):
        note = f"{state.completed} episode(s) completed, {n_retry} retried, {n_drop} dropped"
        return Verdict.ok(note if state.episodes or n_retry else None)
    causes = Counter(_cause(str(e.fields.get("error") or "")) for e in retries + drops if e.kind is not
                     CL.PAYLOAD_EXHAUSTED)
    scenes = Counter(str(e.fields.get("scene")) for e in retries + drops if e.fields.get("scene"))
    parts = [f"{n_retry} episode(s) retried of {state.count('sessions')} started"]
    if n_drop:
        parts.append(f"{n_drop} payload(s) dropped after their retries")
    if exhausted:
        parts.append("the rollout worker then raised 'Rollout payload exhausted retries' (the rollout replica ends)")
    if deaths:
        parts.append(f"an AlpaSim worker died ({deaths[0].fields.get('code')})")
    named = [f"{_CAUSES[c]} ({n}x)" for c, n in causes.most_common() if c in _CAUSES]
    text = "Simulator episodes fail: " + ", ".join(parts) + "."
    if named:
        text += " Causes: " + "; ".join(named) + "."
    if scenes and len(scenes) == 1 and sum(scenes.values()) >= 2:
        scene = next(iter(scenes))
        text += f" Every failure is scene {scene}: some scenes fail to load in AlpaSim (e.g. the NRE backend)."
    actions = []
    if causes.get("deadline"):
        actions.append(_hydra("alpasim.simulation_timeout_s=1200") + " (an episode may take minutes)")
    if causes.get("no_metrics") or causes.get("missing_metric"):
        actions.append("check reward.terms' metric_name against AlpaSim's metrics (collision_any, offroad, progress, "
                       "...) and AlpaSim's evaluation in runtime_worker_<N>.log")
    if scenes and len(scenes) == 1:
        actions.append(f"drop scene {next(iter(scenes))} from dataset.scene_ids")
    actions.append("read the AlpaSim worker's 'Rollout FAILED' lines and their tracebacks "
                   "(alpasim/wizard_<i>/txt-logs/runtime_worker_<N>.log)")
    severity = Severity.CRITICAL if drops or deaths else Severity.WARNING
    evidence: list[Any] = [*drops[:2], *deaths[:1], *retries[:2], *sim_failed[:1], *(retries[-1:] if retries else [])]
    return verdict_of(make_finding(
        "episode_failures", text, evidence, severity=severity, action="; ".join(actions).capitalize() + ".",
        data={"retried": n_retry, "dropped": n_drop, "sessions": state.count("sessions"),
              "exhausted": exhausted, "causes": dict(causes), "scenes": dict(scenes.most_common(8))}))


# --- non-finite values ---------------------------------------------------------------------------------
_FATAL = {"trajectory": "the policy's trajectory stayed non-finite after 3 re-runs (the rollout process ends)",
          "log_probs": "the trainer's model returned non-finite log-probs",
          "old_logprobs": "a rollout payload carries non-finite log-probs",
          "kl_div": "the trainer's KL divergence is non-finite",
          "grad": "the reduced gradient is non-finite ([GRPO:grad-guard])"}


@detector("nonfinite_values")
def nonfinite_values(ctx: DetectorContext) -> Verdict:
    state = ctx.closed_loop
    if state is None:
        return Verdict.skipped(NOT_CLOSED_LOOP)
    hits = _events(ctx, CL.NONFINITE)
    fatal = [h for h in hits if h.fields.get("what") != "trajectory_retry"]
    retried = [h for h in hits if h.fields.get("what") == "trajectory_retry"]
    n_retry = state.count("nonfinite:trajectory_retry")
    last_chance = [h for h in retried if h.fields.get("attempt") == h.fields.get("of")]
    if not fatal and n_retry < NONFINITE_RETRIES and not last_chance:
        return Verdict.ok(f"{n_retry} non-finite trajectory re-run(s), each recovered" if n_retry else None)
    cfg = state.config
    if fatal:
        whats = list(dict.fromkeys(str(h.fields.get("what")) for h in fatal))
        text = "Non-finite values stop training: " + "; ".join(_FATAL.get(w, w) for w in whats) + "."
        if n_retry:
            text += f" Before that, {n_retry} trajectory re-run(s) for non-finite output."
        trainer = any(w in ("log_probs", "kl_div", "grad") for w in whats)
        action = ("Relaunch from the last checkpoint with a lower learning rate (cosmos.train.optm_lr) and a gradient "
                  "clip; a non-finite gradient usually follows an unstable step." if trainer else
                  "Keep policy.inference.sampling.force_determinism=true and retry_on_nonfinite=true (the AR1.5 "
                  "preset's values: the prefill intermittently emits all-NaN trajectories) and relaunch.")
        return verdict_of(make_finding("nonfinite_values", text, [*fatal[:3], *retried[-2:]], action=action,
                                       data={"fatal": whats, "trajectory_retries": n_retry}))
    text = (f"The policy emitted a non-finite trajectory {n_retry} time(s); each was re-run "
            + ("(one only at its last attempt, 3/3: the next would end the rollout process)" if last_chance else "")
            + ". The AR1.5 prefill does this now and then; this often means the rollout is close to failing.")
    determinism = cfg.get("policy.inference.sampling.force_determinism") if cfg is not None else None
    action = ("Set policy.inference.sampling.force_determinism=true (it lowers the frequency)." if determinism is False
              else "Watch the rate; a fatal 'after 3 retries' ends the rollout replica.")
    return verdict_of(make_finding("nonfinite_values", text, [*last_chance[:2], *retried[:2], *retried[-1:]],
                                   severity=Severity.WARNING, action=action, data={"trajectory_retries": n_retry}))


# --- the horizon -----------------------------------------------------------------------------------------
@detector("horizon_mismatch")
def horizon_mismatch(ctx: DetectorContext) -> Verdict:
    state = ctx.closed_loop
    if state is None:
        return Verdict.skipped(NOT_CLOSED_LOOP)
    hits = _events(ctx, CL.HORIZON_MISMATCH)
    if not hits:
        return Verdict.ok()
    h = hits[0]
    f = h.fields
    if f.get("where") == "packer":
        text = (f"An episode gave {f.get('produced')} policy steps, more than expected_valid_steps="
                f"{f.get('expected_valid_steps')}: the packer refuses to drop replay rows and the policy stops.")
    else:
        text = (f"Each episode gives {f.get('closed_loop_steps')} closed-loop policy steps (n_sim_steps "
                f"{f.get('n_sim_steps')} minus the force-GT warmup), but expected_valid_steps="
                f"{f.get('expected_valid_steps')}: the host refused to start.")
    steps = f.get("closed_loop_steps")
    action = (f"Relaunch with expected_valid_steps={steps}." if steps else
              "Make expected_valid_steps = n_sim_steps − force_gt_duration_us // control_timestep_us (lint "
              "resolved_config.yaml: a1x-tui lint <run>/cosmos_config.toml).")
    return verdict_of(make_finding("horizon_mismatch", text, _with_exit(ctx, hits), action=action, data=dict(f)))


# --- NuRec access ----------------------------------------------------------------------------------------
@detector("nurec_access_denied")
def nurec_access_denied(ctx: DetectorContext) -> Verdict:
    if ctx.closed_loop is None:
        return Verdict.skipped(NOT_CLOSED_LOOP)
    hits = _events(ctx, CL.NUREC_ACCESS)
    if not hits:
        return Verdict.ok()
    reason = str(hits[0].fields.get("reason"))
    page = "https://huggingface.co/datasets/nvidia/PhysicalAI-Autonomous-Vehicles-NuRec"
    texts = {
        "no_token": ("The host found no Hugging Face token; AlpaSim's scenes are the gated dataset "
                     "nvidia/PhysicalAI-Autonomous-Vehicles-NuRec.", "Run `hf auth login` or export HF_TOKEN "
                     f"(an account with access: {page}), then relaunch."),
        "denied": (f"The Hugging Face token may not read the gated NuRec dataset (HTTP {hits[0].fields.get('http')}).",
                   f"Request or accept access at {page}, then `hf auth login` again or export the approved HF_TOKEN."),
        "unreachable": ("The host could not reach Hugging Face to check the NuRec access (offline, a proxy, or the "
                        "Hub down); it checks before anything starts.", "Check the network (HF_ENDPOINT, proxies) "
                        "and relaunch."),
    }
    text, action = texts.get(reason, texts["denied"])
    severity = Severity.WARNING if reason == "unreachable" else None
    return verdict_of(make_finding("nurec_access_denied", text + " Nothing was started.", _with_exit(ctx, hits),
                                   action=action,
                                   severity=severity, data={"reason": reason}))


# --- ports ---------------------------------------------------------------------------------------------
@detector("port_conflict")
def port_conflict(ctx: DetectorContext) -> Verdict:
    state = ctx.closed_loop
    if state is None:
        return Verdict.skipped(NOT_CLOSED_LOOP)
    busy = _events(ctx, CL.PORT_IN_USE)
    want = state.config.controller_port if state.config is not None else None
    moved = [e for e in _events(ctx, CL.CONTROLLER_PORT) if want is not None and e.fields.get("port") != want]
    if not busy and not moved:
        return Verdict.ok()
    parts = []
    severity = Severity.CRITICAL if busy else None
    if moved:
        port = moved[0].fields.get("port")
        workers = (state.config.integer("execution.slurm.topology.cosmos_nodes") or 1) if state.config else 1
        parts.append(f"cosmos.launch.controller_port {want} was taken: the Cosmos-RL launcher started the controller "
                     f"on {port} instead")
        if state.config is not None and state.config.slurm and workers > 1:
            parts.append(f"the other {workers - 1} Cosmos-RL node(s) still dial port {want}")
            severity = Severity.CRITICAL
    if busy:
        sim = [e for e in busy if e.fields.get("what") == "sim_ports"]
        parts.append("AlpaSim found no free port for its services" if sim else "a process could not bind its port "
                     "(Address already in use)")
    text = "; ".join(parts) + ". Another job on this machine holds it (29500 is also torchrun's default port)."
    action = (f"Free the port (`ss -ltnp | grep {want}`) or " if want else "Free the port or ") + \
        _hydra("cosmos.launch.controller_port=<a free port>") + "; for AlpaSim's services, alpasim.wizard_args." \
        "extra_overrides='wizard.baseport=<a free range>'."
    return verdict_of(make_finding("port_conflict", text, [*busy[:3], *moved[:2]], severity=severity, action=action,
                                   data={"configured": want, "used": moved[0].fields.get("port") if moved else None}))


# --- the host's own validation -----------------------------------------------------------------------------
@detector("host_config_rejected")
def host_config_rejected(ctx: DetectorContext) -> Verdict:
    if ctx.closed_loop is None:
        # a host's terminal checked on its own: the same refusals, read as the catalog's signals
        refused: list[Any] = ctx.signals(SignalKind.HOST_CONFIG_REJECTED)
        if not refused:
            return Verdict.skipped(NOT_CLOSED_LOOP)
        hits = refused
    else:
        hits = _events(ctx, CL.HOST_CONFIG_REJECTED)
    if not hits:
        return Verdict.ok()
    reasons = list(dict.fromkeys(str(h.fields.get("reason")) for h in hits))
    messages = "; ".join(str(h.fields.get("message")) for h in hits[:3])
    text = f"The AlpaGym host refused its config before starting anything: {messages}"
    if "gpu_capacity" in reasons:
        text += " (a GPU shortfall: the Cosmos-RL replicas need more GPUs than the topology leaves them)"
    if "missing_choice" in reasons:
        text += (" ('You must specify' a config group: Hydra found no value for it, as when the experiment named on "
                 "the command line does not exist and its defaults never loaded, docs/reference/alpagym.md §2.5)")
    return verdict_of(make_finding(
        "host_config_rejected", text + ".", _with_exit(ctx, hits),
        action="Fix the named key with a Hydra override and relaunch; `a1x-tui lint <run>/cosmos_config.toml` checks "
        "the generated configs before launch.", data={"reasons": reasons}))


# --- reward hacking ------------------------------------------------------------------------------------
def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


@detector("reward_hacking")
def reward_hacking(ctx: DetectorContext) -> Verdict:
    state = ctx.closed_loop
    if state is None:
        return Verdict.skipped(NOT_CLOSED_LOOP)
    bins = state.bins(ctx.metrics)
    scored = [e for e in state.episodes.values() if e.completed and (e.terms or e.scores)]
    if not scored:
        return Verdict.blind("no scored episode: the per-episode scores are in artifacts/*.json (transport=disk)")
    findings = []
    terms = {t.name: t for t in (state.config.reward_terms if state.config is not None else [])}
    flat: list[tuple[str, float]] = []
    steps_with = [s for s, b in bins.items() if b.terms]
    if len(scored) >= FLAT_EPISODES and len(steps_with) >= FLAT_STEPS:
        names = sorted({n for e in scored for n in e.terms})
        for name in names:
            if name in ("gt_num_paired", "gt_anchor_us"):
                continue  # bookkeeping of distance_to_gt, not a term
            values = {round(e.terms[name], 9) for e in scored if name in e.terms and finite(e.terms[name])}
            if len(values) != 1:
                continue
            value = next(iter(values))
            term = terms.get(name)
            if term is not None and term.scale < 0 and value == 0.0:
                continue  # a penalty that never fires (no collision, never offroad): healthy
            flat.append((name, value))
    rise: list[str] = []
    series_steps = [s for s, b in bins.items() if b.rewards and b.scores]
    if len(series_steps) >= RISE_STEPS:
        half = len(series_steps) // 2
        first, second = series_steps[:half], series_steps[half:]

        def avg(steps: list[int], key: str) -> float | None:
            values = [v for s in steps for v in bins[s].scores.get(key, [])]
            return _mean(values) if values else None

        r1 = _mean([bins[s].reward_sum / bins[s].rewards for s in first])
        r2 = _mean([bins[s].reward_sum / bins[s].rewards for s in second])
        for key, label in (("collision_any", "collision"), ("offroad", "offroad")):
            a, b = avg(first, key), avg(second, key)
            if a is not None and b is not None and r2 > r1 and b - a >= RISE_RATE and b >= RISE_FACTOR * max(a, 1e-9):
                rise.append(f"the {label} rate rose from {a:.2f} (steps {first[0]}-{first[-1]}) to {b:.2f} "
                            f"(steps {second[0]}-{second[-1]}) while the mean reward rose from {r1:.3f} to {r2:.3f}")
    if not flat and not rise:
        return Verdict.ok(f"{len(scored)} scored episode(s) over {len(bins)} step(s)")
    parts = []
    if rise:
        parts.append("; ".join(rise) + ": the policy is rewarded for driving worse (a penalty too small against "
                     "progress, or a term it can game)")
    if flat:
        parts.append(", ".join(f"{n} is {v:g} in every one of {len(scored)} episodes" for n, v in flat)
                     + ": that term gives GRPO nothing to compare")
    evidence: list[Any] = []
    steps = ctx.store.steps.items()
    if steps:
        evidence += [steps[0], steps[-1]]
    worst = sorted((e for e in scored if e.artifact), key=lambda e: -(e.scores.get("collision_any") or 0.0))[:2]
    evidence += [Evidence(file=e.artifact or "", line=None, text=", ".join(
        f"{k}={v:g}" for k, v in sorted({**e.scores, **e.terms}.items()) if k in ("collision_any", "offroad",
                                                                                  "progress", "gt_rmse_xy"))
        + (f", reward={e.reward:g}" if e.reward is not None else "")) for e in worst]
    if not evidence:
        evidence = [Evidence(file="artifacts/", line=None, text=f"{len(scored)} scored episodes")]
    findings.append(make_finding(
        "reward_hacking", "Closed-loop scores disagree with the reward: " + "; ".join(parts) + ".", evidence,
        action="Look at the episodes (alpasim/wizard_<i>/rollouts/<scene>/<session>/); weigh the safety terms up "
        "(reward=progress_safety, or a larger collision_any scale in reward.terms), or drop a term that never moves.",
        data={"flat_terms": dict(flat), "rising": rise}))
    return verdict_of(*findings)


__all__ = ["alpasim_bringup_failed", "episode_failures", "horizon_mismatch", "host_config_rejected",
           "nonfinite_values", "nurec_access_denied", "port_conflict", "reward_hacking"]
