"""Closed-loop runs: the lines of AlpaGym's host, its rollout worker and trainer, AlpaSim's runtime and the
Cosmos-RL launcher's controller port, each giving a closed-loop event (``a1x_diagnostics.closed_loop_events.CL``;
docs/reference/alpagym.md §4). The closed-loop reader (``a1x_diagnostics.alpagym.parser``) derives its rules
from these entries, then from the host's refusals of ``alpagym.py``.

An entry's ``event`` is a ``CL`` kind; its fields are ``fields=`` then the regex's named groups, typed by name
(``alpagym.parser``: counts as ints, times and losses as floats, ``error`` and ``message`` clipped). ``read_in``
is the file its samples are read in: the host's capture (``Role.LAUNCHER``, the default), a rollout or policy
log (AlpaGym's lines behind torchrun's ``[rank<N>]:``), AlpaSim's worker log (``Role.SIMULATOR``).
No recording of an AlpaGym run exists (tests/fixtures/alpagym/README.md): every sample is ``rendered``, most
of them lines of those fixtures, built from the format strings the sources below hold.

One entry a message: see ``a1x_diagnostics/signatures/__init__.py`` for what an entry holds and how to add one."""

from __future__ import annotations

from a1x_diagnostics.closed_loop_events import CL
from a1x_diagnostics.events import Role
from a1x_diagnostics.signatures.entry import Hit, Sig

_AG = "NVlabs/alpagym@85ed1f5:packages/"
_HOST = _AG + "host/src/alpagym_host/"
_RT = _AG + "runtime/src/alpagym_runtime/"
_SIM = "NVlabs/alpasim@10cae1c:src/"
_UUID = "000000009c4e4b7da1f25e0c3b6d8a00"
_SCENE = "clipgt-a309e228-26e1-423e-a44c-cb00aa7378cb"
_NUREC = "nvidia/PhysicalAI-Autonomous-Vehicles-NuRec"

SIGS = (
    # --- the host (alpagym_host: run_lifecycle.py, alpasim_wizard.py, huggingface_validation.py), §4.1
    Sig("cl.run_started", r"Starting AlpaGym run: backend=(?P<backend>\S+) run_dir=(?P<run_dir>\S+) .*?policy_replicas=(?P<policy_replicas>\d+) rollout_replicas=(?P<rollout_replicas>\d+)", CL.RUN_STARTED,
        source=_HOST + "run_lifecycle.py:94 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("2026-07-01 12:00:00,000 INFO root: Starting AlpaGym run: backend=local_process run_dir=/data/alpagym-runs/20260701T120000Z-0f3c5a9e2b7d4c1e8a6f0b3d5e7c9a1b dataset=1 scene ids policy_replicas=1 rollout_replicas=1",)),
    Sig("cl.wizard_started", r"Starting AlpaSim Wizard: runtime_index=(?P<runtime_index>\d+) host=(?P<host>\S+)", CL.WIZARD_STARTED,
        source=_HOST + "run_lifecycle.py:254 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("2026-07-01 12:00:00,000 INFO root: Starting AlpaSim Wizard: runtime_index=0 host=localhost log_dir=/data/alpagym-runs/20260701T120000Z-0f3c5a9e2b7d4c1e8a6f0b3d5e7c9a1b/alpasim/wizard_0",)),
    Sig("cl.runtime_ready", r"AlpaSim RuntimeService is ready at (?P<endpoint>\S+)", CL.RUNTIME_READY,
        source=_HOST + "alpasim_wizard.py:169 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("2026-07-01 12:00:03,000 INFO root: AlpaSim RuntimeService is ready at localhost:6004",)),
    Sig("cl.runtime_published", r"Published AlpaSim runtime: id=(?P<id>\S+) host=(?P<host>\S+) port=(?P<port>\d+) capacity=(?P<capacity>\d+)", CL.RUNTIME_PUBLISHED,
        source=_HOST + "run_lifecycle.py:182 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("2026-07-01 12:00:03,000 INFO root: Published AlpaSim runtime: id=alpasim-runtime-0 host=localhost port=6004 capacity=4",)),
    Sig("cl.cosmos_started", r"Starting Cosmos launcher: ", CL.COSMOS_STARTED,
        source=_HOST + "run_lifecycle.py:203 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("2026-07-01 12:00:03,000 INFO root: Starting Cosmos launcher: backend=local_process cosmos_hosts=localhost log_dir=/data/alpagym-runs/20260701T120000Z-0f3c5a9e2b7d4c1e8a6f0b3d5e7c9a1b/logs",)),
    Sig("cl.cosmos_completed", r"Cosmos launcher completed\s*$", CL.COSMOS_COMPLETED,
        source=_HOST + "run_lifecycle.py:235 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("2026-07-01 12:05:37,000 INFO root: Cosmos launcher completed",)),
    Sig("cl.wizard_stopping", r"Stopping (?P<count>\d+) AlpaSim Wizard process", CL.WIZARD_STOPPING,
        source=_HOST + "run_lifecycle.py:238 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("2026-07-01 12:05:37,000 INFO root: Stopping 1 AlpaSim Wizard process(es)",)),
    Sig("cl.bringup_failed.wizard_exited", r"AlpaSim Wizard exited before readiness with code (?P<code>-?\d+)", CL.BRINGUP_FAILED, fields={"reason": "wizard_exited"},
        source=_HOST + "alpasim_wizard.py:161 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("RuntimeError: AlpaSim Wizard exited before readiness with code 1",)),
    Sig("cl.bringup_failed.runtime_timeout", r"Timed out waiting for AlpaSim RuntimeService at (?P<path>\S+)", CL.BRINGUP_FAILED, fields={"reason": "runtime_timeout"},
        source=_HOST + "alpasim_wizard.py:179 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("TimeoutError: Timed out waiting for AlpaSim RuntimeService at /data/alpagym-runs/r/alpasim/wizard_0/runtime_server.txt",)),
    Sig("cl.bringup_failed.no_scenes", r"AlpaSim runtime (?P<runtime_index>\d+) reported no scenes", CL.BRINGUP_FAILED, fields={"reason": "no_scenes"},
        source=_HOST + "run_lifecycle.py:166 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("ValueError: AlpaSim runtime 0 reported no scenes",)),
    Sig("cl.bringup_failed.scene_lists_differ", r"AlpaSim runtimes reported different scene lists", CL.BRINGUP_FAILED, fields={"reason": "scene_lists_differ"},
        source=_HOST + "run_lifecycle.py:171 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=(f"ValueError: AlpaSim runtimes reported different scene lists: ['{_SCENE}'] != []",)),
    Sig("cl.bringup_failed.no_docker", r"execution\.backend=local_process requires", CL.BRINGUP_FAILED, fields={"reason": "no_docker"},
        source=_HOST + "run_lifecycle.py:68, :80 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("ValueError: execution.backend=local_process requires Docker in PATH because AlpaSim Wizard uses Docker Compose for local launches.",
                  "ValueError: execution.backend=local_process requires `docker compose` to be available.")),
    Sig("cl.bringup_failed.driver_too_old", r"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", CL.BRINGUP_FAILED, fields={"reason": "driver_too_old"},
        source="NVlabs/alpasim@10cae1c:docs/ONBOARDING.md:85 (the NRE container's CUDA error at warm-up on a driver older than 570; docs/reference/alpagym.md §2.4)", samples=(),
        rendered=("nre-0  | RuntimeError: CUDA driver error: CUDA_ERROR_UNSUPPORTED_PTX_VERSION",)),
    Sig("cl.bringup_failed.grpc_stubs_missing", r"No module named '(?P<module>alpasim_grpc[\w.]*)'", CL.BRINGUP_FAILED, fields={"reason": "grpc_stubs_missing"},
        source="NVlabs/alpasim@10cae1c:docs/ONBOARDING.md:112 (the gRPC stubs not compiled on the host; docs/reference/alpagym.md §6)", samples=(),
        rendered=("ModuleNotFoundError: No module named 'alpasim_grpc.v0.common_pb2'",)),
    Sig("cl.bringup_failed.nccl_master_missing", r"NCCL master endpoint was not published", CL.BRINGUP_FAILED, fields={"reason": "nccl_master_missing"},
        source=_HOST + "endpoint_registry.py:121 (docs/reference/alpagym.md §4.1)", samples=(),
        rendered=("RuntimeError: NCCL master endpoint was not published at /data/alpagym-runs/r/topology/nccl_master.yaml within 600s",)),
    Sig("cl.port_in_use.sim_ports", r"Could not find an available port in range (?P<port>\d+)-(?P<last>\d+)", CL.PORT_IN_USE, fields={"what": "sim_ports"},
        source=_SIM + "wizard/alpasim_wizard/context.py:200 (docs/reference/alpagym.md §1.4)", samples=(),
        rendered=("RuntimeError: Could not find an available port in range 6000-6099",)),
    Sig("cl.port_in_use.bind", r"Address already in use", CL.PORT_IN_USE, fields={"what": "bind", "port": None},
        source="NVlabs/alpasim@10cae1c:docs/ONBOARDING.md:100 (its services on a taken port: bind's OSError, the C library's "
               "text of errno 98, EADDRINUSE; docs/reference/alpagym.md §1.4)", samples=(),
        rendered=("OSError: [Errno 98] Address already in use",)),
    Sig("cl.horizon_mismatch.config", r"AlpaSim rollout horizon does not match the trainer packer budget: n_sim_steps=(?P<n_sim_steps>\d+) .*?= (?P<closed_loop_steps>\d+) closed-loop policy steps, but expected_valid_steps=(?P<expected_valid_steps>\d+)", CL.HORIZON_MISMATCH, fields={"where": "config"},
        source=_HOST + "config_validation.py:262 (docs/reference/alpagym.md §2.2)", samples=(),
        rendered=("ValueError: AlpaSim rollout horizon does not match the trainer packer budget: n_sim_steps=30 minus the force-GT warmup (8 = force_gt_duration_us=1600000 // control_timestep_us=200000) = 22 closed-loop policy steps, but expected_valid_steps=8. Adjust expected_valid_steps (n_sim_steps follows via the config resolver), or override runtime.simulation_config.n_sim_steps via alpasim.wizard_args.extra_overrides for non-per-step policies.",)),
    Sig("cl.horizon_mismatch.packer", r"AlpaGym replay session=(?P<uuid>\w+) produced (?P<produced>\d+) policy outputs, exceeding expected_valid_steps=(?P<expected_valid_steps>\d+)", CL.HORIZON_MISMATCH, fields={"where": "packer"}, read_in=Role.POLICY,
        source=_RT + "cosmos/packer.py:192 (docs/reference/alpagym.md §2.2)", samples=(),
        rendered=(f"[rank0]:ValueError: AlpaGym replay session={_UUID} produced 22 policy outputs, exceeding expected_valid_steps=8; refusing to drop replay rows",)),
    Sig("cl.nurec_access.no_token", _NUREC.replace(".", r"\.") + r", but no token was found", CL.NUREC_ACCESS, fields={"reason": "no_token", "http": None},
        source=_HOST + "huggingface_validation.py:31 (docs/reference/alpagym.md §1.3)", samples=(),
        rendered=(f"RuntimeError: AlpaSim scenes live in the gated HuggingFace dataset {_NUREC}, but no token was found. Run `hf auth login` or set HF_TOKEN to a token from an account with dataset access.",)),
    Sig("cl.nurec_access.denied", r"cannot access the gated dataset \S+ \(HTTP (?P<http>\d+)\)", CL.NUREC_ACCESS, fields={"reason": "denied"},
        source=_HOST + "huggingface_validation.py:79 (docs/reference/alpagym.md §1.3)", samples=(),
        rendered=(f"RuntimeError: HuggingFace token cannot access the gated dataset {_NUREC} (HTTP 403). Request or accept dataset access at https://huggingface.co/datasets/{_NUREC}, then rerun `hf auth login` or export HF_TOKEN with an approved token.",)),
    Sig("cl.nurec_access.unreachable", r"Could not reach HuggingFace while validating", CL.NUREC_ACCESS, fields={"reason": "unreachable", "http": None},
        source=_HOST + "huggingface_validation.py:91 (docs/reference/alpagym.md §1.3)", samples=(),
        rendered=(f"RuntimeError: Could not reach HuggingFace while validating access to {_NUREC}: <urlopen error [Errno -3] Temporary failure in name resolution>",)),
    Sig("cl.nurec_access.http", r"Could not validate HuggingFace access to \S+ \(HTTP (?P<http>\d+)\)", CL.NUREC_ACCESS, fields={"reason": "unreachable"},
        source=_HOST + "huggingface_validation.py:86 (docs/reference/alpagym.md §1.3)", samples=(),
        rendered=(f"RuntimeError: Could not validate HuggingFace access to {_NUREC} (HTTP 502).",)),
    # --- Cosmos-RL's launcher: the controller port it chose (docs/reference/alpagym.md §1.4)
    Sig("cl.controller_port.local", r"Controller will be launched locally on port (?P<port>\d+)", CL.CONTROLLER_PORT,
        source="nvidia-cosmos/cosmos-rl@d2a2c57:cosmos_rl/launcher/launch_all.py:725 (docs/reference/alpagym.md §1.4)", samples=(),
        rendered=("[cosmos] 2026-07-01 12:00:05,000 - cosmos - INFO - Controller will be launched locally on port 29500.",)),
    Sig("cl.controller_port.local_ip", r"Using local IP: \S+ so launching controller on port (?P<port>\d+)", CL.CONTROLLER_PORT,
        source="nvidia-cosmos/cosmos-rl@d2a2c57:cosmos_rl/launcher/launch_all.py:699 (docs/reference/alpagym.md §1.4)", samples=(),
        rendered=("[cosmos] 2026-07-01 12:00:05,000 - cosmos - INFO - Using local IP: 10.0.0.12 so launching controller on port 29501",)),
    # --- the rollout worker (alpagym_runtime; the Alpamayo policy's inference), §4.2
    Sig("cl.backend_ready", r"Streaming rollout backend ready: runtime=(?P<runtime>.*?) driver=.*max_concurrent_rollouts=(?P<max_concurrent>\d+)", CL.BACKEND_READY, read_in=Role.ROLLOUT,
        source=_RT + "cosmos/rollout_backend.py:165 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=("[rank0]:2026-07-01 12:00:35,000 INFO alpagym_runtime.cosmos.rollout_backend: [alpagym] Streaming rollout backend ready: runtime=alpasim-runtime-0@localhost:6004 driver=alpagym-driver-0@localhost:41234 max_concurrent_rollouts=4",)),
    Sig("cl.generation", r"rollout_generation: (?P<payloads>\d+) payloads, is_validation=(?P<validation>\w+)", CL.GENERATION, read_in=Role.ROLLOUT,
        source=_RT + "cosmos/rollout_backend.py:220 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=("[rank0]:2026-07-01 12:00:40,000 INFO alpagym_runtime.cosmos.rollout_backend: rollout_generation: 2 payloads, is_validation=False",)),
    Sig("cl.session_started", r"Started AlpaGym driver session=(?P<uuid>\S+) seed=(?P<seed>-?\d+)", CL.SESSION_STARTED, read_in=Role.ROLLOUT,
        source=_RT + "alpasim/driver_server.py:132 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=(f"[rank0]:2026-07-01 12:00:50,000 INFO alpagym_runtime.alpasim.driver_server: Started AlpaGym driver session={_UUID} seed=0",)),
    Sig("cl.session_closed", r"Closed AlpaGym driver session=(?P<uuid>\S+) recorded_steps=(?P<recorded_steps>\d+)", CL.SESSION_CLOSED, read_in=Role.ROLLOUT,
        source=_RT + "alpasim/driver_server.py:230 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=(f"[rank0]:2026-07-01 12:01:34,500 INFO alpagym_runtime.alpasim.driver_server: Closed AlpaGym driver session={_UUID} recorded_steps=22",)),
    Sig("cl.episode_retry", r"Retrying payload uuid=(?P<uuid>\S+) scene=(?P<scene>\S+) attempt=(?P<attempt>\d+) retries_left=(?P<retries_left>-?\d+): ?(?P<error>.*)", CL.EPISODE_RETRY, read_in=Role.ROLLOUT,
        source=_RT + "episode_runner/streaming_worker.py:299 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=("[rank0]:2026-07-01 12:02:20,000 WARNING alpagym_runtime.episode_runner.streaming_worker: Retrying payload uuid=000000649c4e4b7da1f25e0c3b6d8a64 scene=clipgt-01d503d4-449b-46fc-8d78-9085e70d3554 attempt=1 retries_left=2: AlpaSim rollout failed",)),
    Sig("cl.episode_dropped", r"Dropping payload after exhausted retries: scene=(?P<scene>\S+) last_uuid=(?P<uuid>\S+): ?(?P<error>.*)", CL.EPISODE_DROPPED, read_in=Role.ROLLOUT,
        source=_RT + "episode_runner/streaming_worker.py:313 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=("[rank0]:2026-07-01 12:03:20,000 ERROR alpagym_runtime.episode_runner.streaming_worker: Dropping payload after exhausted retries: scene=clipgt-01d503d4-449b-46fc-8d78-9085e70d3554 last_uuid=000000679c4e4b7da1f25e0c3b6d8a67: AlpaSim rollout failed",)),
    Sig("cl.payload_exhausted", r"Rollout payload exhausted retries: prompt_idx=(?P<prompt_idx>\d+) collected=(?P<collected>\d+)/(?P<target>\d+)", CL.PAYLOAD_EXHAUSTED, read_in=Role.ROLLOUT,
        source=_RT + "cosmos/rollout_backend.py:238 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=("[rank0]:RuntimeError: Rollout payload exhausted retries: prompt_idx=1 collected=0/2",)),
    Sig("cl.nonfinite.trajectory_retry", r"non-finite trajectory; re-running inference \((?P<attempt>\d+)/(?P<of>\d+)\)", CL.NONFINITE, fields={"what": "trajectory_retry"}, read_in=Role.ROLLOUT,
        source=_AG + "policies/alpamayo_r1/src/alpagym_alpamayo_r1/inference_model.py:219 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=("[rank0]:2026-07-01 12:03:10,000 WARNING alpagym_alpamayo_r1.inference_model: Alpamayo R1 emitted a non-finite trajectory; re-running inference (1/3).",)),
    Sig("cl.nonfinite.trajectory", r"non-finite trajectory after (?P<attempt>\d+) retries", CL.NONFINITE, fields={"what": "trajectory"}, read_in=Role.ROLLOUT,
        source=_AG + "policies/alpamayo_r1/src/alpagym_alpamayo_r1/inference_model.py:237 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=("[rank0]:ValueError: Alpamayo R1 emitted a non-finite trajectory after 3 retries.",)),
    Sig("cl.nonfinite.log_probs", r"model returned non-finite log_probs", CL.NONFINITE, fields={"what": "log_probs"}, read_in=Role.POLICY,
        source=_RT + "cosmos/replay_objective.py:35 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=("[rank0]:FloatingPointError: model returned non-finite log_probs",)),
    Sig("cl.nonfinite.old_logprobs", r"rollout payload contains non-finite old_logprobs", CL.NONFINITE, fields={"what": "old_logprobs"}, read_in=Role.POLICY,
        source=_RT + "cosmos/replay_objective.py:37 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=("[rank0]:FloatingPointError: rollout payload contains non-finite old_logprobs",)),
    Sig("cl.nonfinite.kl_div", r"model returned non-finite kl_div", CL.NONFINITE, fields={"what": "kl_div"}, read_in=Role.POLICY,
        source=_RT + "cosmos/replay_objective.py:39 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=("[rank0]:FloatingPointError: model returned non-finite kl_div",)),
    Sig("cl.nonfinite.grad", r"\[GRPO:grad-guard\] non-finite reduced gradient", CL.NONFINITE, fields={"what": "grad"}, read_in=Role.POLICY,
        source=_RT + "cosmos/trainer.py:532 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=("[rank0]:FloatingPointError: [GRPO:grad-guard] non-finite reduced gradient after backward",)),
    Sig("cl.engine_failed", r"InferenceEngine forward pass failed; killing process", CL.ENGINE_FAILED, read_in=Role.ROLLOUT,
        source=_RT + "inference/inference_engine.py:141 (docs/reference/alpagym.md §4.2)", samples=(),
        rendered=("[rank0]:2026-07-01 12:03:10,000 ERROR alpagym_runtime.inference.inference_engine: InferenceEngine forward pass failed; killing process",)),
    # --- the trainer and packer (alpagym_runtime.cosmos: trainer, packer, rollout_filter), §4.3
    Sig("cl.trainer_step_start", r"AlpaGym trainer step start current_step=(?P<step>\d+) total_steps=(?P<total>\d+) received_rollouts=(?P<received>\d+) group_size=(?P<group_size>\d+)", CL.TRAINER_STEP_START, read_in=Role.POLICY,
        source=_RT + "cosmos/trainer.py:177 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=("[rank0]:2026-07-01 12:01:50,000 INFO alpagym_runtime.cosmos.trainer: AlpaGym trainer step start current_step=1 total_steps=4 received_rollouts=2 group_size=2 mini_batch=1 grpo_optimization_iterations=1 is_master_replica=True do_save_checkpoint=False",)),
    Sig("cl.trainer_step_end", r"AlpaGym trainer step end current_step=(?P<step>\d+) .*?loss_avg=(?P<loss_avg>\S+) kl_avg=(?P<kl_avg>\S+) .*?clip_fraction=(?P<clip_fraction>\S+) grad_norm=(?P<grad_norm>\S+) lr=(?P<lr>\S+)", CL.TRAINER_STEP_END, read_in=Role.POLICY,
        source=_RT + "cosmos/trainer.py:247 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=("[rank0]:2026-07-01 12:01:55,000 INFO alpagym_runtime.cosmos.trainer: AlpaGym trainer step end current_step=1 steps=44 batches=44 loss_avg=0.012340 kl_avg=0.000000 ratio_min=0.981000 ratio_max=1.020000 clip_fraction=0.000000 grad_norm=0.521000 lr=0.0001",)),
    Sig("cl.packed", r"Packed AlpaGym replay artifact session=(?P<uuid>\S+) .*?valid_steps=(?P<valid_steps>\d+) padded_steps=(?P<padded_steps>\d+) reward=(?P<reward>\S+)", CL.PACKED, read_in=Role.POLICY,
        source=_RT + "cosmos/packer.py:242 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=(f"[rank0]:2026-07-01 12:01:50,000 INFO alpagym_runtime.cosmos.packer: Packed AlpaGym replay artifact session={_UUID} total_steps=22 policy_outputs=22 valid_steps=22 padded_steps=0 reward=0.594000",)),
    Sig("cl.stale_used", r"Using (?P<stale>\d+)/(?P<kept>\d+) stale rollouts \(min_allowed_version=(?P<min_allowed>-?\d+)", CL.STALE_USED, read_in=Role.POLICY,
        source=_RT + "cosmos/rollout_filter.py:68 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=("[rank0]:2026-07-01 12:04:00,000 WARNING alpagym_runtime.cosmos.rollout_filter: Using 1/2 stale rollouts (min_allowed_version=2, kept_versions=[1, 3])",)),
    Sig("cl.no_samples", r"has no trainable samples after filtering: current_step=(?P<step>\d+)", CL.NO_SAMPLES, read_in=Role.POLICY,
        source=_RT + "cosmos/trainer.py:198 (docs/reference/alpagym.md §4.3)", samples=(),
        rendered=("[rank0]:ValueError: AlpaGym trainer step has no trainable samples after filtering: current_step=3",)),
    # --- AlpaSim's runtime worker (txt-logs/runtime_worker_<N>.log) and its evaluator, §4.4
    Sig("cl.sim_started", r"Session STARTING: uuid=(?P<uuid>\S+) scene=(?P<scene>\S+) steps=(?P<steps>\d+)", CL.SIM_STARTED, read_in=Role.SIMULATOR,
        source=_SIM + "runtime/alpasim_runtime/event_loop.py:535 (docs/reference/alpagym.md §4.4)", samples=(),
        rendered=(f"12:00:50.000 [W0] INFO:\tSession STARTING: uuid={_UUID} scene={_SCENE} steps=30",)),
    Sig("cl.sim_completed", r"Session COMPLETED: uuid=(?P<uuid>\S+) scene=(?P<scene>\S+) simulated (?P<sim_s>[\d.]+) sim seconds in (?P<wall_s>[\d.]+) wall clock seconds .*?\(total rollout (?P<total_s>[\d.]+)s", CL.SIM_COMPLETED, read_in=Role.SIMULATOR,
        source=_SIM + "runtime/alpasim_runtime/event_loop.py:594 (docs/reference/alpagym.md §4.4)", samples=(),
        rendered=(f"12:01:34.500 [W0] INFO:\tSession COMPLETED: uuid={_UUID} scene={_SCENE} simulated 6.00 sim seconds in 41.50 wall clock seconds for 0.14x real time (total rollout 44.50s incl. setup/warmup)",)),
    Sig("cl.sim_failed", r"Rollout FAILED: job=(?P<job>\S+) scene=(?P<scene>\S+) uuid=(?P<uuid>\S+) error=(?P<error>.*)", CL.SIM_FAILED, read_in=Role.SIMULATOR,
        source=_SIM + "runtime/alpasim_runtime/worker/main.py:164 (docs/reference/alpagym.md §4.4)", samples=(),
        rendered=("12:02:00.000 [W0] WARNING:\tRollout FAILED: job=job-0 scene=clipgt-01d503d4-449b-46fc-8d78-9085e70d3554 uuid=000000649c4e4b7da1f25e0c3b6d8a64 error=Failed to create NRE backend for scene",)),
    Sig("cl.sim_worker_died", r"Worker (?P<worker>\d+) died with exit code (?P<code>-?\d+)", CL.SIM_WORKER_DIED, read_in=Role.SIMULATOR,
        source=_SIM + "runtime/alpasim_runtime/worker/runtime.py:124 (docs/reference/alpagym.md §4.4)", samples=(),
        rendered=("12:02:05.000 ERROR:\tWorker 1 died with exit code -9",)),
    Sig("cl.sim_eval_failed", r"Evaluation failed in subprocess for session (?P<uuid>\S+)", CL.SIM_EVAL_FAILED, read_in=Role.SIMULATOR,
        source=_SIM + "eval/src/eval/runtime_evaluator.py:272 (docs/reference/alpagym.md §4.4)", samples=(),
        rendered=(f"12:01:35.000 ERROR:\tEvaluation failed in subprocess for session {_UUID}",)),
    Sig("cl.sim_metrics", r"Aggregated metrics for (?P<uuid>\S+): (?P<metrics>\{.*\})", CL.SIM_METRICS, read_in=Role.SIMULATOR,
        source=_SIM + "eval/src/eval/runtime_evaluator.py:292 (docs/reference/alpagym.md §4.4)", samples=(),
        rendered=(f"12:01:35.000 INFO:\tAggregated metrics for {_UUID}: {{'collision_any': '0.0000', 'offroad': '0.0000', 'progress': '0.9120'}}",)),
)

HITS: tuple[Hit, ...] = ()
