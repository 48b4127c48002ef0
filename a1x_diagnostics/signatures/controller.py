"""Controller: what ``controller.log`` says (docs/reference/cosmos-rl.md §4, §8.6; Redis §4.1).

One entry a message: see ``a1x_diagnostics/signatures/__init__.py`` for what an entry holds and how
to add one."""

from __future__ import annotations

from a1x_diagnostics.events import DynamicSampling, Role, Staleness, Stat, Step, Throttle, ThrottleState, TrainReport
from a1x_diagnostics.events import SignalKind as S
from a1x_diagnostics.signatures.entry import CONTROLLER, DATA_FETCHER, DYNAMIC_SAMPLING, OWN, STEP, Hit, Sig
from a1x_diagnostics.signatures.fields import report_pairs, sampling_counts, step_pieces, throttle_state

SIGS = (
    Sig("stat", r"\[Controller\] Stat: (?P<samples>\d+) samples, (?P<completion_tokens>\d+) completion tokens, (?P<pending>\d+) pending rollouts, (?:(?P<in_flight>\d+) in-flight, (?P<outdated_filtered>\d+) filtered \(outdated\), )?(?P<elapsed_s>[\d.eE+-]+|nan|inf)(?:s| seconds) elapsed", Stat, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:dispatcher/controller.py:720 (docs/reference/cosmos-rl.md §4.3)",
        samples=(
            "[cosmos] 2026-11-29 15:03:33,573 - cosmos - INFO - [Controller] Stat: 8 samples, 467 completion tokens, 0 pending rollouts, 0.1567220687866211 seconds elapsed",
            "[cosmos] 2026-12-01 20:08:27,770 - cosmos - INFO - [Controller] Stat: 12 samples, 696 completion tokens, 4 pending rollouts, 0.347689151763916 seconds elapsed",
        )),
    Sig("step", r"^Step: (?P<step>\d+)/(?P<total>\d+)(?:, (?P<pieces>.*))?$", Step, gate=STEP, read=step_pieces,
        source="cosmos-rl@89f2e5b5:status.py:1806 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:03:35,062 - cosmos - INFO - Step: 1/8, Reward Mean: 0.5000, Reward Std: 0.0000, Reward Max: 0.5000, Reward Min: 0.5000, Completion Length Mean: 57.50, Completion Length Max: 66.00, Average loss: 0.00000, Max loss: 0.00000, Learning rate: 1.00000e-05, Entropy: 5.93497, Effective Entropy: 5.93493, Grad Norm: 0.00000, KL Loss Avg: 0.00000, KL Loss Max: 0.00000, Iteration time: 6.23s.",
            "[cosmos] 2026-11-29 15:03:37,934 - cosmos - INFO - Step: 2/8, Reward Mean: 0.5000, Reward Std: 0.0000, Reward Max: 0.5000, Reward Min: 0.5000, Completion Length Mean: 57.62, Completion Length Max: 64.00, Average loss: 0.00000, Max loss: 0.00000, Learning rate: 1.00000e-05, Entropy: 5.93492, Effective Entropy: 5.93489, Grad Norm: 0.00000, KL Loss Avg: 0.00000, KL Loss Max: 0.00000, Iteration time: 2.85s.",
        )),
    Sig("train_report", r"Train report data from total (?P<rollouts>\d+) rollouts: ?(?P<pairs>.*)$", TrainReport, gate=CONTROLLER, read=report_pairs,
        source="cosmos-rl@89f2e5b5:status.py:1758 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:03:35,062 - cosmos - INFO - [Controller] Train report data from total 8 rollouts: train/reward_mean: 0.5, train/reward_std: 0.0, train/reward_max: 0.5, train/reward_min: 0.5, rollout/completion_length_mean: 57.5, rollout/completion_length_std: 5.1478150704935, rollout/completion_length_max: 66, rollout/completion_length_min: 50, rollout/advantage_mean: 0.0, rollout/advantage_std: 0.0, rollout/advantage_max: 0.0, rollout/advantage_min: 0.0, rollout/filter_reward_mean: 0.5, rollout/filter_reward_std: 0.0, rollout/filter_reward_max: 0.5, rollout/filter_reward_min: 0.5, train/loss_avg: 0.0, train/loss_max: 0.0, train/learning_rate: 1e-05, train/iteration_time: 6.22521435546875, train/kl_loss_avg: 0.0, train/kl_loss_max: 0, train/grad_norm: 0.0, train/entropy: 5.934969425201416, train/effective_entropy: 5.934933662414551, train/total_steps: 8, train_step: 1.0",
            "[cosmos] 2026-11-29 15:03:40,846 - cosmos - INFO - [Controller] Train report data from total 8 rollouts: train/reward_mean: 0.5, train/reward_std: 0.0, train/reward_max: 0.5, train/reward_min: 0.5, rollout/completion_length_mean: 52.875, rollout/completion_length_std: 5.348773223833667, rollout/completion_length_max: 64, rollout/completion_length_min: 45, rollout/advantage_mean: 0.0, rollout/advantage_std: 0.0, rollout/advantage_max: 0.0, rollout/advantage_min: 0.0, rollout/filter_reward_mean: 0.5, rollout/filter_reward_std: 0.0, rollout/filter_reward_max: 0.5, rollout/filter_reward_min: 0.5, train/loss_avg: 0.0, train/loss_max: 0.0, train/learning_rate: 1e-05, train/iteration_time: 2.890033203125, train/kl_loss_avg: 0.0, train/kl_loss_max: 0, train/grad_norm: 0.0, train/entropy: 5.934438228607178, train/effective_entropy: 5.934385299682617, train/total_steps: 8, train_step: 3.0",
        )),
    Sig("dynamic_sampling", r"Dynamic sampling rewards distribution so far: (?P<counts>.*)$", DynamicSampling, gate=DYNAMIC_SAMPLING, read=sampling_counts,
        source="cosmos-rl@89f2e5b5:status.py:1810 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:03:45,436 - cosmos - INFO - Dynamic sampling rewards distribution so far: {'outdated': 0}.",
            "[cosmos] 2026-11-29 15:03:55,245 - cosmos - INFO - Dynamic sampling rewards distribution so far: {'outdated': 0}.",
        )),
    Sig("staleness", r"weight staleness: accepted p50=(?P<p50>-?\d+) p99=(?P<p99>-?\d+) max=(?P<max>-?\d+), discarded=(?P<discarded>\d+)/(?P<total>\d+) \(allowed_outdated_steps=(?P<allowed_outdated_steps>-?\d+), sync_weight_interval=(?P<sync_weight_interval>-?\d+)\)", Staleness, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:status.py:1391 (docs/reference/cosmos-rl.md §4.4)",
        samples=(
            "[cosmos] 2026-11-29 14:57:23,187 - cosmos - INFO - [Controller] weight staleness: accepted p50=0 p99=0 max=0, discarded=0/4 (allowed_outdated_steps=4, sync_weight_interval=1)",
            "[cosmos] 2026-11-29 14:57:23,326 - cosmos - INFO - [Controller] weight staleness: accepted p50=0 p99=0 max=0, discarded=0/4 (allowed_outdated_steps=4, sync_weight_interval=1)",
        )),
    Sig("throttle", r"Soft throttle (?P<word>ENGAGED|still engaged after|RELEASED after) ?(?:(?P<seconds>[\d.]+)s)?:? samples_on_the_fly=(?P<in_flight>\d+) (?:>= |< )?threshold=(?P<threshold>\d+)", Throttle, gate=CONTROLLER, read=throttle_state,
        source="cosmos-rl@89f2e5b5:controller.py:320 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 14:57:33,009 - cosmos - INFO - [Controller] Soft throttle RELEASED after 8.7s: samples_on_the_fly=32 < threshold=40",
            "[cosmos] 2026-11-29 14:57:39,713 - cosmos - INFO - [Controller] Soft throttle RELEASED after 6.3s: samples_on_the_fly=32 < threshold=40",
        )),
    Sig("pending_over", r"Current pending rollouts (?P<pending>\d+) is larger than the allowed outdated version count (\d+)\. Generate with batch (?P<batch>\d+)", Throttle, fields={"state": ThrottleState.PENDING_OVER_ALLOWED},
        source="cosmos-rl@89f2e5b5:controller.py:450 (docs/reference/cosmos-rl.md §14)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - [Controller] Current pending rollouts 200 is larger than the allowed outdated version count 4. Generate with batch 8",)),
)

# Tried after other stacks' entries (``a1x_diagnostics.signatures.SIGS``), whose messages a failure here may
# quote.
LATE = (
    Sig("launch_script.controller_script", r"^\[Controller\] Using script: (?P<script>\S+)", S.LAUNCH_SCRIPT, gate=OWN, fields={"role": "controller"},
        source="cosmos-rl@89f2e5b5:cosmos_rl/launcher/launch_controller.sh:50 (docs/reference/cosmos-rl.md §2.8)",
        samples=("[Controller] Using script: /work/main/tools/fixture_recorder/entry_tiny_grpo.py",)),
    Sig("launch_script.controller_cmd", r"^Controller CMD: (?P<command>.*)$", S.LAUNCH_SCRIPT, gate=OWN, fields={"role": "controller"},
        source="cosmos-rl@89f2e5b5:cosmos_rl/launcher/launch_controller.sh:74 (docs/reference/cosmos-rl.md §2.8)",
        samples=("Controller CMD: python /work/main/tools/fixture_recorder/entry_tiny_grpo.py --port 8100 --config /tmp/tmpqkfgygz6.toml",)),
    Sig("replica_atoms_set.all_atoms_of", r"All atoms of (?:Role\.)?(?P<role>\w+) Replica (?P<uuid>\S+) has been set", S.REPLICA_ATOMS_SET, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:status.py:797 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:03:26,520 - cosmos - INFO - [Controller] All atoms of POLICY Replica df0e3949-11f9-4aca-9d53-ca5c5ab12b6f has been set.",
            "[cosmos] 2026-11-29 15:03:20,822 - cosmos - INFO - [Controller] All atoms of POLICY Replica 9336b163-a0ba-4c80-98c9-664d851c4900 has been set.",
        )),
    Sig("waiting_for_replicas.more_replicas_to_arrive", r"Waiting for (?P<count>-?\d+) more replicas to arrive", S.WAITING_FOR_REPLICAS, gate=OWN,
        source="cosmos-rl@89f2e5b5:status.py:977 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 13:42:37,966 - cosmos - INFO - Waiting for 1 more replicas to arrive",
            "[cosmos] 2025-06-09 22:14:29,220 - cosmos - INFO - Waiting for 3 more replicas to arrive",
        )),
    Sig("no_valid_rollout.no_valid_rollout_replicas_found", r"No valid rollout replicas found", S.NO_VALID_ROLLOUT, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:status.py:854 (docs/reference/cosmos-rl.md §4.2)",
        samples=(
            "[cosmos] 2026-11-29 15:03:26,521 - cosmos - INFO - [Controller] No valid rollout replicas found, skip PolicyToRolloutUnicastCommand",
            "[cosmos] 2026-11-29 15:03:23,704 - cosmos - INFO - [Controller] No valid rollout replicas found, skip PolicyToRolloutUnicastCommand",
        )),
    Sig("replica_dead.is_dead", r"\[Controller\] (?P<role>Policy|Rollout|Reference) (?P<uuid>\S+) is dead", S.REPLICA_DEAD, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:status.py:442 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 14:58:17,244 - cosmos - WARNING - [Controller] Policy abf209ac-f0e3-4ecc-aacd-b8690a3d039a is dead",
            "[cosmos] 2026-11-29 13:50:54,242 - cosmos - WARNING - [Controller] Policy e4e4f804-af69-4237-a35b-42949161358a is dead",
        )),
    Sig("replica_unregistering.unregistering_replica", r"Unregistering replica (?P<uuid>\S+)", S.REPLICA_UNREGISTERING, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:controller.py:784 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:04:13,897 - cosmos - INFO - [Controller] Unregistering replica 9336b163-a0ba-4c80-98c9-664d851c4900",
            "[cosmos] 2026-11-29 15:04:11,703 - cosmos - INFO - [Controller] Unregistering replica dc6fecfa-622e-4633-a283-04dbe24f7359",
        )),
    Sig("replica_stopping.is_stopping", r"Replica (?P<uuid>\S+) is stopping\.", S.REPLICA_STOPPING, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:status.py:759 (docs/reference/cosmos-rl.md §4.7)",
        samples=(
            "[cosmos] 2026-11-29 15:04:13,897 - cosmos - INFO - [Controller] Replica 9336b163-a0ba-4c80-98c9-664d851c4900 is stopping.",
            "[cosmos] 2026-11-29 15:06:43,266 - cosmos - INFO - [Controller] Replica 6c97c996-7456-49a2-a363-3b3722d565a9 is stopping.",
        )),
    Sig("hang_replicas_cleaned.will_clean_hang_replicas", r"will clean hang replicas: ?(?P<replicas>.*)$", S.HANG_REPLICAS_CLEANED, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:controller.py:846 (docs/reference/cosmos-rl.md §4.7)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - INFO - [Controller] will clean hang replicas: ['3f2a8c1e-5b7d-4e9a-9c1f-0a1b2c3d4e5f']",)),
    Sig("no_policy_replicas.no_policy_replicas_registered_assuming", r"No policy replicas registered\. Assuming training is finished", S.NO_POLICY_REPLICAS, gate=CONTROLLER,
        source="nvidia-cosmos/cosmos-rl@v0.4.4:cosmos_rl/dispatcher/controller.py:390 (docs/reference/cosmos-rl.md §4.3; seen in tests/fixtures/cosmos/v0.4.4/policy_killed)",
        samples=(
            "[cosmos] 2026-11-29 14:58:17,247 - cosmos - WARNING - [Controller] No policy replicas registered. Assuming training is finished; signaling end of rollouts.",
            "[cosmos] 2026-11-29 13:50:54,243 - cosmos - WARNING - [Controller] No policy replicas registered. Assuming training is finished; signaling end of rollouts.",
        )),
    Sig("rollout_end_signal.received_rollout_end_signal_from", r"Received rollout end signal from (?P<uuid>\S+?)(?: rank=(?P<rank>\S+))?\s*$", S.ROLLOUT_END_SIGNAL, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:run_web_panel.py:678 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:03:45,469 - cosmos - INFO - [Controller] Received rollout end signal from cee44f6a-e9a3-4c85-b0d4-191aa48a2af7",
            "[cosmos] 2026-11-29 15:00:19,129 - cosmos - INFO - [Controller] Received rollout end signal from 09809770-e2e7-452c-afe2-11dadbab54cd rank=0",
        )),
    Sig("job_draining.job_phase_draining", r"Job phase \w+ -> DRAINING(?: at frozen horizon (?P<horizon>-?\d+))?", S.JOB_DRAINING, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:status.py:510 (docs/reference/cosmos-rl.md §4.7)",
        samples=(
            "[cosmos] 2026-11-29 15:10:00,391 - cosmos - INFO - [Controller] Job phase RUNNING -> DRAINING at frozen horizon 8",
            "[cosmos] 2026-11-29 14:57:29,387 - cosmos - INFO - [Controller] Job phase RUNNING -> DRAINING at frozen horizon 8",
        )),
    Sig("all_epochs_fetched.all_epochs_finished_fetching_rollout", r"All epochs finished fetching rollout prompts", S.ALL_EPOCHS_FETCHED, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:data_fetcher.py:572 (docs/reference/cosmos-rl.md §4.1)",
        samples=(
            "[cosmos] 2026-11-29 15:03:45,466 - cosmos - INFO - [Controller] All epochs finished fetching rollout prompts, wait for rollouts generation and training to complete.",
            "[cosmos] 2026-11-29 13:42:52,548 - cosmos - INFO - [Controller] All epochs finished fetching rollout prompts, wait for rollouts generation and training to complete.",
        )),
    Sig("all_rollouts_ended.all_rollouts_have_ended_recompute", r"All rollouts have ended, recompute total steps with (?P<remaining>\d+) remaining rollouts", S.ALL_ROLLOUTS_ENDED, gate=CONTROLLER, fields={"phase": 'recompute'},
        source="cosmos-rl@747d1bd:run_web_panel.py:437 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:03:45,469 - cosmos - INFO - [Controller] All rollouts have ended, recompute total steps with 32 remaining rollouts...",
            "[cosmos] 2025-06-09 22:14:29,220 - cosmos - INFO - [Controller] All rollouts have ended, recompute total steps with 37 remaining rollouts...",
        )),
    Sig("all_rollouts_ended.there_are_still_remaining_steps", r"There are still remaining steps, no op required", S.ALL_ROLLOUTS_ENDED, gate=CONTROLLER, fields={"phase": 'steps_remain', "remaining": None},
        source="cosmos-rl@747d1bd:run_web_panel.py:437 (docs/reference/cosmos-rl.md §4.7)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - INFO - [Controller] There are still remaining steps, no op required",)),
    Sig("all_rollouts_ended.no_remaining_steps_policy_and", r"No remaining steps, policy and rollouts happen to finish", S.ALL_ROLLOUTS_ENDED, gate=CONTROLLER, fields={"phase": 'finished_together', "remaining": None},
        source="cosmos-rl@747d1bd:run_web_panel.py:437 (docs/reference/cosmos-rl.md §4.7)",
        samples=(
            "[cosmos] 2026-11-29 15:03:45,469 - cosmos - INFO - [Controller] No remaining steps, policy and rollouts happen to finish at the same time",
            "[cosmos] 2025-06-09 22:14:29,220 - cosmos - INFO - [Controller] No remaining steps, policy and rollouts happen to finish at the same time",
        )),
    Sig("all_rollouts_ended.clear_the_rollout_buffer_and", r"Clear the rollout buffer, and trigger an extra", S.ALL_ROLLOUTS_ENDED, gate=CONTROLLER, fields={"phase": 'extra_fetch', "remaining": None},
        source="cosmos-rl@747d1bd:run_web_panel.py:437 (docs/reference/cosmos-rl.md §4.7)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - INFO - [Controller] Clear the rollout buffer, and trigger an extra `DataFetch`",)),
    Sig("policy_side_finished.policy_side_finished_broadcasting_stop", r"Policy side finished; broadcasting STOP(?: to (?P<rollouts>\d+))?", S.POLICY_SIDE_FINISHED, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:run_web_panel.py:309 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:00:33,907 - cosmos - INFO - [Controller] Policy side finished; broadcasting STOP to 1 rollout replica(s).",
            "[cosmos] 2026-11-29 15:10:05,448 - cosmos - INFO - [Controller] Policy side finished; broadcasting STOP to 1 rollout replica(s).",
        )),
    Sig("all_replicas_finished.all_replicas_are_finished", r"All replicas are finished(?: \((?P<reason>.*?)\))?[;,] finalizing", S.ALL_REPLICAS_FINISHED, gate=CONTROLLER,
        source="cosmos-rl@89f2e5b5:run_web_panel.py:179 (docs/reference/cosmos-rl.md §14)",
        samples=(
            "[cosmos] 2026-11-29 15:00:34,062 - cosmos - INFO - [Controller] All replicas are finished (clean unregister of 09809770-e2e7-452c-afe2-11dadbab54cd); finalizing -- shutting down controller.",
            "[cosmos] 2026-11-29 15:10:06,125 - cosmos - INFO - [Controller] All replicas are finished (clean unregister of 4ef1b5d8-45a3-4d16-b431-dedfda8efc07); finalizing -- shutting down controller.",
        )),
    Sig("controller_shutdown_abnormal.rollout_checkout_gate_timed_out", r"Rollout checkout gate timed out after (?P<seconds>[\d.]+)s: only (?P<posted>\d+)/(?P<expected>\d+)", S.CONTROLLER_SHUTDOWN_ABNORMAL, fields={"reason": 'checkout_gate_timeout'},
        source="cosmos-rl@89f2e5b5:run_web_panel.py:226 (docs/reference/cosmos-rl.md §4.7)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - [ABNORMAL shutdown] Rollout checkout gate timed out after 200s: only 1/2 rollout replicas posted end.  A rollout likely wedged while still heartbeating; forcing controller shutdown.",)),
    Sig("controller_shutdown_abnormal.all_policy_replicas_are_dead", r"All policy replicas are dead and COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS", S.CONTROLLER_SHUTDOWN_ABNORMAL, gate=CONTROLLER, fields={"reason": 'all_policies_dead'},
        source="cosmos-rl@89f2e5b5:run_web_panel.py:347 (docs/reference/cosmos-rl.md §4.7)",
        samples=(
            "[cosmos] 2026-11-29 14:58:17,245 - cosmos - WARNING - [Controller] All policy replicas are dead and COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS is set.  Initiating controller shutdown so the scheduling layer (SLURM, etc.) can release the job instead of waiting for the wall-clock timeout.",
            "[cosmos] 2026-11-29 14:57:33,092 - cosmos - WARNING - [Controller] All policy replicas are dead and COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS is set.  Initiating controller shutdown so the scheduling layer (SLURM, etc.) can release the job instead of waiting for the wall-clock timeout.",
        )),
    Sig("validation.validation_finished_average_reward", r"Validation finished, average reward: .*? at step (?P<step>\d+)", S.VALIDATION, gate=CONTROLLER, fields={"phase": 'finished'},
        source="cosmos-rl@89f2e5b5:status.py:1063 (docs/reference/cosmos-rl.md §4.6)",
        samples=("[cosmos] 2026-11-29 14:58:02,117 - cosmos - INFO - [Controller] Validation finished, average reward: 0.4123, total rollouts: 64, max reward: 1.0, min reward: 0.0, std reward: 0.31 at step 20",)),
    Sig("config_adjusted.setting_allowed_outdated_steps_to", r"setting (?P<key>allowed_outdated_steps) to (?P<value>-?\d+)", S.CONFIG_ADJUSTED,
        source="cosmos-rl@89f2e5b5:config/__init__.py:1983 (docs/reference/cosmos-rl.md §8.6)",
        samples=(
            "[cosmos] 2026-11-29 15:02:54,224 - cosmos - WARNING - allowed_outdated_steps is less than sync_weight_interval - 1, setting allowed_outdated_steps to 3.",
            "[cosmos] 2026-11-29 14:56:38,080 - cosmos - WARNING - allowed_outdated_steps is less than sync_weight_interval - 1, setting allowed_outdated_steps to 3.",
        )),
    Sig("config_adjusted.on_policy_is_enabled_so", r"on_policy is enabled, so (?P<key>allowed_outdated_steps) is set to (?P<value>-?\d+)", S.CONFIG_ADJUSTED, read_in=Role.POLICY,
        source="cosmos-rl@89f2e5b5:config/__init__.py:1004 (docs/reference/cosmos-rl.md §8.6)",
        samples=("[rank0]:[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - on_policy is enabled, so allowed_outdated_steps is set to 0.",)),
    Sig("config_adjusted.is_below_allowed_outdated_steps", r"(?P<key>max_inflight_steps) \(\d+\) is below allowed_outdated_steps \+ 1 \(\d+\); raising to (?P<value>\d+)", S.CONFIG_ADJUSTED, read_in=Role.POLICY,
        source="cosmos-rl@89f2e5b5:config/__init__.py:707 (docs/reference/cosmos-rl.md §8.6)",
        samples=("[rank0]:[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - max_inflight_steps (2) is below allowed_outdated_steps + 1 (5); raising to 5.",)),
    Sig("config_adjusted.coalesce_weight_sync_requires_off", r"(?P<key>coalesce_weight_sync) requires off-policy training", S.CONFIG_ADJUSTED, fields={"value": 'False'}, read_in=Role.POLICY,
        source="cosmos-rl@89f2e5b5:config/__init__.py:1017 (docs/reference/cosmos-rl.md §8.6)",
        samples=("[rank0]:[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - coalesce_weight_sync requires off-policy training with allowed_outdated_steps > 0 (on_policy=True, allowed_outdated_steps=0); disabling it.",)),
    Sig("config_adjusted.is_not_positive_so_disable", r"(?P<key>\w+) is not positive so disable it as None", S.CONFIG_ADJUSTED, fields={"value": 'None'}, read_in=Role.POLICY,
        source="cosmos-rl@89f2e5b5:config/__init__.py:682 (docs/reference/cosmos-rl.md §8.6)",
        samples=("[rank0]:[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - dataloader_batch_size is not positive so disable it as None.",)),
    Sig("config_adjusted.seed_is_negative_setting_to", r"Seed is negative, setting to (?P<value>-?\d+)", S.CONFIG_ADJUSTED, fields={"key": 'seed'}, read_in=Role.POLICY,
        source="cosmos-rl@89f2e5b5:config/__init__.py:682 (docs/reference/cosmos-rl.md §8.6)",
        samples=("[rank0]:[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - Seed is negative, setting to 42",)),
    Sig("config_adjusted.is_enabled_so_is_set_to", r"(?:(?:DAPO|Decoupled loss|use_rollout_logprobs_for_loss|Distillation) is enabled), so (?P<key>\w+) is set to (?P<value>[^\s.]+(?:\.\d+)?)", S.CONFIG_ADJUSTED, read_in=Role.POLICY,
        source="cosmos-rl@89f2e5b5:config/__init__.py:1004 (docs/reference/cosmos-rl.md §8.6)",
        samples=(
            "[rank0]:[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - Decoupled loss is enabled, so rollout_as_token_ids is set to True.",
            "[rank0]:[cosmos] 2025-06-09 22:14:29,220 - cosmos - WARNING - DAPO is enabled, so outdated_rollout_fetch_batch_size is set to 128 as a large value.",
        )),
    Sig("redis_failure.failed_to_start_redis_server", r"Failed to start redis server with command: (?P<command>.*) with return code (?P<rc>-?\d+)", S.REDIS_FAILURE,
        source="cosmos-rl@89f2e5b5:controller.py:202 (docs/reference/cosmos-rl.md §4.1)",
        samples=("Traceback (most recent call last):\n  File \"/opt/cosmos_rl/entry.py\", line 12, in main\nRuntimeError: Failed to start redis server with command: redis-server /tmp/redis.conf --dbfilename cosmos_rl_x.rdb --save \"\" with return code 127",)),
    Sig("redis_failure.redis_server_failed_to_start", r"Redis server failed to start after (?P<attempts>\d+) attempts", S.REDIS_FAILURE, fields={"rc": None},
        source="cosmos-rl@89f2e5b5:controller.py:202 (docs/reference/cosmos-rl.md §4.1)",
        samples=("Traceback (most recent call last):\n  File \"/opt/cosmos_rl/entry.py\", line 12, in main\nRuntimeError: Redis server failed to start after 10 attempts, starting from port 12800. Check /tmp/redis.log for details.",)),
    Sig("redis_failure.redis_failed_to", r"\[Redis\] Failed to (?P<error>.*)$", S.REDIS_FAILURE, fields={"rc": None},
        source="cosmos-rl@89f2e5b5:redis_stream.py:167 (docs/reference/cosmos-rl.md §13.6)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - ERROR - [Redis] Failed to write to Redis stream abc_command: Connection refused",)),
    # --- 0.4.7 (docs/reference/cosmos-rl.md §16.2): the controller's terminal errors (then os._exit(86)), the
    # resume agreement, a rollout's NCCL report, and the two normal ends before total_steps
    Sig("controller_terminal.monitor", r"Controller monitor failed; terminating execution: (?P<error>.*)$", S.CONTROLLER_TERMINAL, fields={"source": "monitor"},
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/dispatcher/run_web_panel.py:436 (errors: dispatcher/status.py:1066, "
               ":1222; then os._exit(86), :437) (docs/reference/cosmos-rl.md §16.2)",
        samples=("[cosmos] 2026-12-05 21:45:03,624 - cosmos - CRITICAL - Controller monitor failed; terminating execution: All policy replicas departed before training completed; resume the job from a checkpoint (scale-to-zero rebootstrap is unsupported)",),
        rendered=("[cosmos] 2026-12-05 21:45:03,624 - cosmos - CRITICAL - Controller monitor failed; terminating execution: Policy membership changed during an unsettled update; completion is uncertain and the original ACK set remains incomplete. Restart from a checkpoint; elastic step recovery is unsupported.",)),
    Sig("controller_terminal.publication", r"Controller publication failed; terminating execution: (?P<error>.*)$", S.CONTROLLER_TERMINAL, fields={"source": "publication"},
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/dispatcher/controller.py:56 (then os._exit(86), :57) "
               "(docs/reference/cosmos-rl.md §16.2)",
        samples=(),
        rendered=("[cosmos] 2026-12-05 21:45:03,624 - cosmos - CRITICAL - Controller publication failed; terminating execution: Redis publication deadline expired; outcome is unknown",)),
    Sig("controller_terminal.settlement", r"Completion settlement failed; terminating controller", S.CONTROLLER_TERMINAL, fields={"source": "settlement", "error": None},
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/dispatcher/controller.py:1060 (with its traceback; then "
               "os._exit(86), :1063) (docs/reference/cosmos-rl.md §16.2)",
        samples=(),
        rendered=("[cosmos] 2026-12-05 21:45:03,624 - cosmos - CRITICAL - Completion settlement failed; terminating controller",)),
    Sig("resume_failed.agreement", r"Checkpoint resume agreement failed; continuation is unsafe: (?P<error>missing=.*)$", S.RESUME_FAILED, fields={"reason": "mismatch", "path": None},
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/dispatcher/run_web_panel.py:713 (text utils/resume.py:53-56; "
               "then os._exit(1), :702-705) (docs/reference/cosmos-rl.md §16.2)",
        samples=(),
        rendered=("[cosmos] 2026-12-05 21:45:03,624 - cosmos - ERROR - [Dispatcher] Checkpoint resume agreement failed; continuation is unsafe: missing=[], unexpected=[], changed=['remain_samples_num']",)),
    Sig("nccl_error.rollout_reported", r"\[Controller\] Rollout replica (?P<replica>\S+) reported NCCL failure: (?P<error>.*)$", S.NCCL_ERROR, fields={"kind": "rollout_reported"},
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/dispatcher/controller.py:1208 (an acknowledgement: no replica "
               "is reaped) (docs/reference/cosmos-rl.md §16.2)",
        samples=(),
        rendered=("[cosmos] 2026-12-05 21:45:03,624 - cosmos - WARNING - [Controller] Rollout replica 1ca11ca3-70cf-43f9-a44e-f3765ee9d6f3 reported NCCL failure: [Rollout] Timed out building the global mesh communicator for 1ca11ca3-70cf-43f9-a44e-f3765ee9d6f3 (key=d097406a-002b-4ee5-9cb4-475f6f70d910_1ca11ca3-70cf-43f9-a44e-f3765ee9d6f3_0, rank=1, world_size=2) after 60000 ms.",)),
    Sig("stop_requested.application_requested_successful_stop", r"\[Controller\] Application requested successful stop: (?P<reason>.*)$", S.STOP_REQUESTED, gate=CONTROLLER,
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/dispatcher/status.py:556 (POST /api/request_stop, "
               "run_web_panel.py:496-499; the colocated controller's own, status.py:3176-3178) "
               "(docs/reference/cosmos-rl.md §16.2)",
        samples=(),
        rendered=(
            "[cosmos] 2026-12-05 21:45:03,624 - cosmos - INFO - [Controller] Application requested successful stop: reward plateau reached at step 120",
            "[cosmos] 2026-12-05 21:45:03,624 - cosmos - INFO - [Controller] Application requested successful stop: colocated dataset exhausted before a complete training batch",
        )),
    Sig("dataset_exhausted.rank_affine", r"\[Controller\] Rank-affine dataset exhausted: remaining completion capacity (?P<capacity>\[[^\]]*\]) cannot fill batch (?P<batch>\d+)", S.DATASET_EXHAUSTED, gate=CONTROLLER,
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/dispatcher/controller.py:426 (docs/reference/cosmos-rl.md §16.2)",
        samples=(),
        rendered=("[cosmos] 2026-12-05 21:45:03,624 - cosmos - INFO - [Controller] Rank-affine dataset exhausted: remaining completion capacity [6, 2] cannot fill batch 8 on every policy; closing prompt input and draining issued work without another partial update.",)),
    Sig("validation.activating_validation_dataloader_for_step", r"Activating validation dataloader for step (?P<step>\d+)", S.VALIDATION, gate=DATA_FETCHER, fields={"phase": 'start'},
        source="cosmos-rl@89f2e5b5:data_fetcher.py:639 (docs/reference/cosmos-rl.md §4.6)",
        samples=("[cosmos] 2026-11-29 14:58:02,117 - cosmos - INFO - [DataFetcher] Activating validation dataloader for step 10, with length 32",)),
)

HITS = (
    Hit("hit.redis_missing", "redis_missing", ("redis-server", "redis server",), pattern=r"Failed to start redis server with command: .* with return code 127|redis-server: (?:command )?not found|No such file or directory: '?redis-server",
        source="nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/dispatcher/controller.py:203 (the shell's 'redis-server: command not found' before it; docs/reference/cosmos-rl.md §2.3, §8.3; docs/reference/alpamayo-recipe.md §14 row 17)",
        samples=(
            "RuntimeError: Failed to start redis server with command: redis-server /tmp/redis.conf with return code 127",
            "/bin/sh: 1: redis-server: not found",
        )),
)
